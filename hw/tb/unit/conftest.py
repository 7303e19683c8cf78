"""pytest configuration for the lvsnic cocotb unit tests: makes the shared
helpers (lvsnic_tb, lvsnic_ref) importable."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
