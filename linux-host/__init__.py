"""What runs on the hypervisor host: the per-thread collector and host inventory.

Each module here uses only the standard library (psutil and perf when present), so the folder can be
copied to a Proxmox node and run with ``python3 collector.py ...``.
"""
