"""`kubectl apply` of TASPolicy files for the in-memory cluster (`tas run --policies`).

The cluster's TASPolicy objects are made equal to the files' (added, changed, deleted), so the
policies reach the components the way they do on a real cluster: the store follows the
cluster's objects, and the controller has objects to write status to. A file that does not
read leaves the cluster as it was; a policy named twice in a file is refused, as `kubectl
apply` refuses it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import yaml

from tas.cluster.interface import policy_key_of
from tas.policies.documents import read_documents
from tas.policies.files import policy_files
from tas.types import PolicyKey
from tas_inmemory.cluster import InMemoryCluster

#: `tas run`'s logger: what a user of `tas run` reads its policy errors under.
log = logging.getLogger("tas.run")


def apply_policy_files(path: Path, cluster: InMemoryCluster) -> None:
    """Make the cluster's TASPolicy objects equal `--policies`, as `kubectl apply` would.

    The policies then reach the components the way they do on a real cluster (the store
    follows the cluster's objects), and the controller has objects to write status to.
    """
    keys: set[PolicyKey] = set()
    try:
        files = policy_files(path)
    except OSError as error:  # a directory that went away: as if empty
        log.error("Cannot list policies in %s: %s", path, error)
        files = []
    for file in files:
        try:
            # The components' one reader (`tas.policies.documents`), which sees duplicate keys.
            documents = list(read_documents(file.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            log.error("Cannot read policies from %s: %s", file, error)
            return  # keep what the cluster has until the file reads again
        for document in documents:
            body = document.body
            if not isinstance(body, dict) or body.get("kind") != "TASPolicy":
                continue
            try:
                key = policy_key_of(body)
            except ValueError as error:
                log.error("%s: %s", file, error)
                continue
            keys.add(key)
            if document.duplicates:
                # As `kubectl apply` (and `tas validate`) refuse it: the object stays as it was.
                for duplicate in document.duplicates:
                    log.error(
                        "%s:%d: %s: %s; policy %s left as it was",
                        file,
                        duplicate.line,
                        duplicate.path,
                        duplicate.why,
                        key,
                    )
                continue
            cluster.apply_policy(body)
    for stale in cluster.list_policy_documents():
        if stale.key not in keys:
            cluster.delete_policy(stale.key)
