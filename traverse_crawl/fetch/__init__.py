"""The fetch path: the request sent byte for byte, its download handler, URL rules, failures."""
