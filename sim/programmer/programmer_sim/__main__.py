import signal
import sys

from .cli import main

signal.signal(signal.SIGINT, signal.SIG_DFL)     # Ctrl-C ends the tool as it ends the real one: by the signal
sys.exit(main(sys.argv[1:]))
