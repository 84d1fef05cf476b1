"""The KDD'15 performance model and scalability optimizer (``sgdsim optimize``)."""
