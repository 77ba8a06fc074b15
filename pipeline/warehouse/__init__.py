"""The warehouse folder: raw deliveries, snapshots, the lock, publishing, and read-only access to
the published database."""
