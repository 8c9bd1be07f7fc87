"""Where files go: a directory or an S3-compatible bucket, behind one interface."""
