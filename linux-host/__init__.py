"""What runs on the hypervisor host: the per-thread collector and host inventory.

Each module here uses only the standard library (and ``perf`` when it is installed), so the folder can be
copied to a Proxmox node and run with ``python3 multicollector.py``: a node has python3 but not
necessarily psutil, and nothing of stormatrix is imported here. The workstation side uses psutil where
it reads processes of this machine (``stormatrix.backends.proxmox_node``); these modules read
``/proc`` themselves because the same file runs on the node.
"""
