"""What bench.py's sections share: the measuring step, HTTP, Mach-O, wrk."""
