"""The `tas` command: thin entry points that wire the library and the components together."""
