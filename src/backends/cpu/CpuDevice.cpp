// Placeholder: being written (see docs/ARCHITECTURE.md).
