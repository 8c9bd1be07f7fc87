"""Web archives: WARC written while capturing, WARC/WACZ export and import."""
