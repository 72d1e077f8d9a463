"""The vector micro-ISA's state (registers, masks, the align carrier, on-chip pointers):
``regs.py``. Its instructions are registry entries in ``ptoisa/isa/micro/``; the eager names
``pto.v.<op>`` are ``v.py``."""
