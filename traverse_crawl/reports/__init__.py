"""Reports: the per-seed model, SVG pictures, the HTML page, and what changed between crawls."""
