"""The ``kseg`` command (click): parses options, calls operations, presents results.

``main`` holds the command group and the plain commands, ``plugins`` the
``kseg plugins`` group; ``kseg spark`` lives in ``kseg.spark.cli``.
"""
