"""What runs it: the actor kernel, the ZeroMQ transport and codec, logging, retry arithmetic and
the composition roots (CLI, daemon, embedded cluster)."""
