"""The concurrent machine: cores of a cluster as streams joined by pipes and cross-core flags
(streams, mixed, edges), what an executed instruction reads and writes (access), and ranks of
a multi-chip launch with their communication (ranks, ranks_mpi, comm, conformance_ranks)."""
