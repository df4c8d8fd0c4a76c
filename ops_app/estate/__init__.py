"""What happens to the managed estate: devices, incidents and Alertmanager ingestion, the automatic
change record, correlation, the service topology and the demo estate."""
