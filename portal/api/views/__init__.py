"""The API's views, one module per resource family."""
