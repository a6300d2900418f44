//! An injected secret cannot be recovered through what the server echoes back.
