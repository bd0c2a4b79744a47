"""The files beside a segment: read them (``read``), build them as the broker does
(``build``), and check them against the log (``check``)."""
