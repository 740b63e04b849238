"""Every write in billing. Import the functions from their modules."""
