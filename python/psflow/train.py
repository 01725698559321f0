"""TF's tf.train names psflow has: ClusterSpec, Checkpoint, CheckpointManager."""

import json


class ClusterSpec:
    """TF's tf.train.ClusterSpec: jobs and the addresses of their tasks.

    ClusterSpec({"ps": ["h:1", "h:2"], "worker": {1: "h:3"}}): a job's
    tasks are a list (indices 0..n-1) or a dict {index: "host:port"}
    (sparse). Another ClusterSpec or a dict of that form is accepted.
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            self._jobs = {job: dict(tasks) for job, tasks in cluster._jobs.items()}
            return
        if not isinstance(cluster, dict):
            raise TypeError("ClusterSpec: cluster must be a dict {job: [addresses] or "
                            "{index: address}} or a ClusterSpec, got %s" % type(cluster).__name__)
        jobs = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str):
                raise TypeError("ClusterSpec: job names must be str, got %r" % (job,))
            if isinstance(tasks, (list, tuple)):
                items = enumerate(tasks)
            elif isinstance(tasks, dict):
                items = tasks.items()
            else:
                raise TypeError("ClusterSpec: the tasks of job %r must be a list of addresses "
                                "or a dict {index: address}, got %s" % (job, type(tasks).__name__))
            parsed = {}
            for index, address in items:
                try:
                    index = int(index)
                except (TypeError, ValueError):
                    raise TypeError("ClusterSpec: task index %r of job %r is not an int"
                                    % (index, job)) from None
                if index < 0:
                    raise ValueError("ClusterSpec: task index %d of job %r is negative"
                                     % (index, job))
                if not isinstance(address, str):
                    raise TypeError("ClusterSpec: the address of task %d of job %r must be a "
                                    "str, got %r" % (index, job, address))
                parsed[index] = address
            jobs[job] = dict(sorted(parsed.items()))
        self._jobs = dict(sorted(jobs.items()))

    @property
    def jobs(self):
        """The job names, sorted."""
        return list(self._jobs)

    def _job(self, job_name):
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r" % (job_name,)) from None

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return list(self._job(job_name))

    def task_address(self, job_name, task_index):
        tasks = self._job(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError("No task with index %r in job %r" % (task_index, job_name)) from None

    def job_tasks(self, job_name):
        """Addresses by index, None where a sparse job has no task."""
        tasks = self._job(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]

    def as_dict(self):
        """{job: [addresses]} for dense jobs, {job: {index: address}} for sparse ones."""
        out = {}
        for job, tasks in self._jobs.items():
            if list(tasks) == list(range(len(tasks))):
                out[job] = list(tasks.values())
            else:
                out[job] = dict(tasks)
        return out

    def _to_json(self):
        return json.dumps({job: (tasks if isinstance(tasks, list)
                                 else {str(i): a for i, a in tasks.items()})
                           for job, tasks in self.as_dict().items()})

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "ClusterSpec(%r)" % (self.as_dict(),)


def _tracked(kwargs):
    """({name: Variable}, {name: native table}) of Checkpoint's keyword
    arguments: a Variable or a dynamic embedding table by its keyword,
    lists / tuples / dicts of them as "<keyword>/<index or key>" (tables
    and variables are apart: a name may be one of each)."""
    from psflow import _psflow
    from psflow.dynamic_embedding import DynamicEmbedding
    variables, tables = {}, {}

    def add(name, value):
        if isinstance(value, _psflow.Variable):
            variables[name] = value
        elif isinstance(value, DynamicEmbedding):
            tables[name] = value._native
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                add("%s/%d" % (name, i), v)
        elif isinstance(value, dict):
            for k, v in value.items():
                add("%s/%s" % (name, k), v)
        else:
            raise TypeError("Checkpoint: %r is a %s; track psflow.Variables, dynamic embedding "
                            "tables (or lists and dicts of them) and one optimizer"
                            % (name, type(value).__name__))
    for name, value in kwargs.items():
        add(name, value)
    return variables, tables


class Checkpoint:
    """TF's tf.train.Checkpoint(**objects) over psflow's C++ checkpoints:
    Variables (or lists / dicts of them) by keyword, and `optimizer=` a
    psflow.keras optimizer (its iterations; slots are saved with the
    variables). Dynamic embedding tables (psflow.dynamic_embedding) are
    tracked the same way, by keyword: their rows, optimizer slots and
    last-seen steps are saved; `tables=strategy.dynamic_embeddings()`
    tracks every table made through the strategy. write(path) saves a
    directory of safetensors files; restore(path) checks the whole
    checkpoint before changing anything, and a table's restored rows
    replace all of its rows. Restoring into another ps count or
    partitioning works (the parts are re-cut, each row goes to the ps its
    key hashes to now)."""

    def __init__(self, **kwargs):
        from psflow import _psflow
        from psflow.keras.optimizers import Optimizer
        optimizer = kwargs.pop("optimizer", None)
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise TypeError("Checkpoint: optimizer must be a psflow.keras.optimizers "
                            "optimizer, got %s" % type(optimizer).__name__)
        variables, tables = _tracked(kwargs)
        self._native = _psflow._Checkpoint(variables, optimizer, tables)

    def write(self, path):
        """Saves to the directory `path` (which must not exist); returns it."""
        self._native.write(str(path))
        return str(path)

    def restore(self, path):
        self._native.restore(str(path))
        return self


class CheckpointManager:
    """TF's tf.train.CheckpointManager: numbered checkpoints
    <directory>/ckpt-<N>, the oldest deleted beyond max_to_keep (None:
    keep all)."""

    def __init__(self, checkpoint, directory, max_to_keep=None):
        from psflow import _psflow
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError("CheckpointManager: checkpoint must be a psflow.train.Checkpoint")
        self._native = _psflow._CheckpointManager(checkpoint._native, str(directory),
                                                  max_to_keep)

    def save(self):
        """Saves the next checkpoint; returns its path."""
        return self._native.save()

    @property
    def latest_checkpoint(self):
        return self._native.latest_checkpoint

    @property
    def checkpoints(self):
        return self._native.checkpoints

    @property
    def directory(self):
        return self._native.directory

    def restore_or_initialize(self):
        """Restores the latest checkpoint and returns its path; None when
        there is none (the variables keep their values)."""
        return self._native.restore_or_initialize()
