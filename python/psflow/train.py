"""TF's tf.train names psflow has: ClusterSpec."""

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
