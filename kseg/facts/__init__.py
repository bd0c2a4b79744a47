"""The numbers of ``formats/`` as plain Python: one generated module per schema module.

construct is for declaring, parsing and building; importing it costs a short command
more than its own work. What the hot paths need from a schema (its constants, and each
fixed-size ``Struct`` as a ``struct`` format with field names and positions) is copied
here by ``kseg.facts.derive`` (``make facts``), and tests/test_schemas.py fails when a
copy differs from its schema, so each fact is still defined once: in the schema.
"""
