"""The validate operation: one package (``validate``), many packages with their settings and
targets (``gate``), which paths name which packages (``discovery``), configuration
(``settings``), diagnostic columns, and the report they all produce.
"""
