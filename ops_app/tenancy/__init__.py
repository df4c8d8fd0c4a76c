"""Who works in which organization: scoping rows to a user's tenant, the roles (Django groups),
the writes that keep a membership and its role together, and the REST API's token authentication."""
