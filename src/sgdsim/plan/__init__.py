"""``sgdsim plan``: the configuration to rent (search, objective, knee, report)."""
