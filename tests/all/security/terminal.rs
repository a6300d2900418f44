//! Plugin- and model-controlled text cannot take over the operator's terminal.
