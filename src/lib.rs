//! hitl-bridge library.
