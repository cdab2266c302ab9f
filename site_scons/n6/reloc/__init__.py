"""The relocatable ("runtime loadable") model image: prepare, format, pack, check."""
