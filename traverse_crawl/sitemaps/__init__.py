"""Sitemap discovery: the pages a site lists but does not link."""
