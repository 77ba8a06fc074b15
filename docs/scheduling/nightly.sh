#!/bin/sh
# The nightly job every scheduler below calls. runcost reads the CUR 2.0 export straight from S3
# (aws.exports = ["s3://..."] in runcost.toml, credentials from the instance role or profile) and
# downloads only deliveries it has not seen; a run that changes nothing publishes nothing.
set -eu
cd /srv/runcost
exec venv/bin/runcost --log-format json run --config runcost.toml
