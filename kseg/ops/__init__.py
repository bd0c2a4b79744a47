"""Operations: what the commands do (dump, verify, convert, compact, ...), as data.

Operations return or yield data; they never print (``kseg.render`` does).
"""
