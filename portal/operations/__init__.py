"""The operations console for staff: the reservation calendar, utilisation and revenue,
maintenance planning (issue 22), under ``/<lang>/staff/operations/``; the customers'
maintenance feed (iCal) and notices."""
