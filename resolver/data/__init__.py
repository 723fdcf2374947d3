"""What the tool knows: the typed records of ``matrix/`` (``model``), loading and checking them
(``matrix``, ``schema``, ``overlay``, ``resources``), the codes a decision can carry (``codes``), a
node's facts (``node``, ``partitions``), the embedded example nodes and the compatibility graph."""
