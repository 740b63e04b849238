"""The dashboard's views, one module per page group: orders, contracts, documents (the
PDFs and the usage CSV), continuity (suspension and renewal)."""
