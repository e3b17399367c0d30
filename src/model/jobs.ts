// Running jobs of the workload manager (Slurm's squeue, or a file for any other scheduler), as
// plain data: who runs what on which hosts. The hosts are names as the scheduler gives them;
// `job-hosts.ts` matches them to the fabric's adapters.

export interface Job {
  /** As the scheduler prints it: `48213`, an array task `48213_7`, a het job `48213+1`. */
  id: string;
  user: string;
  partition: string;
  name: string;
  /** Host names, hostlists expanded, each once, in the scheduler's order. */
  hosts: readonly string[];
}
