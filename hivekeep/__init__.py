"""hivekeep: persistent memory for LLM agents."""
