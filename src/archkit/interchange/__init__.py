"""File formats archkit exchanges with other tools: the Open-PSA MEF fault-tree XML."""
