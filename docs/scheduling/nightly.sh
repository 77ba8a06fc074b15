#!/bin/sh
# The nightly job every scheduler below calls. runcost reads the CUR 2.0 export straight from S3
# (aws.exports = ["s3://..."] in runcost.toml, credentials from the instance role or profile) and
# downloads only deliveries it has not seen; a run that changes nothing publishes nothing.
set -eu
cd /srv/runcost
# The snapshots and the lock a run writes belong to whoever runs it: a run as root or as a
# scheduler's own user leaves files that the runcost user's later runs cannot replace or delete.
owner=$(stat -c %U .)
if [ "$(id -un)" != "$owner" ]; then
    echo "nightly.sh: running as $(id -un), but /srv/runcost belongs to $owner; run the" \
        "scheduler's job as $owner (cron's user field, User= in the systemd unit, the user of" \
        "the Airflow worker or Dagster daemon)" >&2
    exit 1
fi
exec venv/bin/runcost --log-format json run --config runcost.toml
