//! Text that reaches the model (descriptions, the prompt, the feedback block) cannot forge the protocol's structure.
