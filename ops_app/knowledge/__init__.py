"""The knowledge vault: turning runbooks and uploads into passages (`vault`) and the database
full-text engines that find them (`fulltext`)."""
