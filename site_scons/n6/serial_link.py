"""The serial link of ST's validation firmware, as its host scripts open it: the ST-LINK virtual
COM port's default rate and the aiValidation packet header variants (2-byte by default, the
legacy 1-byte one). A light module: the board file parser and the protocol client both read it."""
BAUDRATE = 921600
HEADERS = ("2byte", "1byte")
DEFAULT_HEADER = HEADERS[0]
