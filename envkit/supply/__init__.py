"""The wheel supply chain: uv command lines, resolution for a foreign target, downloads into
a content-addressed cache, sdists turned into pure wheels, clean installer environments, and
outputs that appear whole or not at all.
"""
