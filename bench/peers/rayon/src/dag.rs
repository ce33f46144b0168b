//! The suite's DAG file (bench/peers/README.md, "The DAG file"): per task its kernel µs and its
//! predecessors, read into successor lists for the executor. Bad input is an error naming the
//! line, never a panic.

/// A task graph as the executor walks it: successors in one flat array (CSR).
#[derive(Debug)]
pub struct Dag {
    costs: Vec<u64>,
    preds: Vec<u32>,
    succ_start: Vec<usize>,
    succ: Vec<u32>,
    roots: Vec<u32>,
    sinks: u32,
}

impl Dag {
    /// Reads `tomii-suite-dag 1 N`, then N lines `cost_us npreds pred...` (predecessors before
    /// their successors).
    pub fn parse(text: &str) -> Result<Dag, String> {
        let mut lines = text.lines();
        let tasks = header(lines.next().unwrap_or(""))?;
        let mut costs = Vec::with_capacity(tasks);
        let mut pred_lists = Vec::with_capacity(tasks);
        for (t, line) in lines.take(tasks).enumerate() {
            let (cost, preds) = task_line(t, line)?;
            costs.push(cost);
            pred_lists.push(preds);
        }
        if costs.len() != tasks {
            return Err(format!("the header announces {tasks} tasks but the file has {}", costs.len()));
        }
        Ok(Dag::from_preds(costs, &pred_lists))
    }

    /// The DAG of these tasks (`pred_lists[t]`: earlier tasks only).
    pub fn from_preds(costs: Vec<u64>, pred_lists: &[Vec<u32>]) -> Dag {
        let n = costs.len();
        let mut counts = vec![0usize; n];
        pred_lists.iter().flatten().for_each(|&p| counts[p as usize] += 1);
        let mut succ_start = vec![0usize; n + 1];
        for t in 0..n {
            succ_start[t + 1] = succ_start[t] + counts[t];
        }
        let mut fill = succ_start.clone();
        let mut succ = vec![0u32; succ_start[n]];
        for (t, preds) in pred_lists.iter().enumerate() {
            for &p in preds {
                succ[fill[p as usize]] = t as u32;
                fill[p as usize] += 1;
            }
        }
        let preds: Vec<u32> = pred_lists.iter().map(|p| p.len() as u32).collect();
        let roots = (0..n as u32).filter(|&t| preds[t as usize] == 0).collect();
        let sinks = counts.iter().filter(|&&c| c == 0).count() as u32;
        Dag { costs, preds, succ_start, succ, roots, sinks }
    }

    pub fn len(&self) -> usize {
        self.costs.len()
    }

    /// The kernel µs of `task` (0: the empty kernel).
    pub fn cost(&self, task: u32) -> u64 {
        self.costs[task as usize]
    }

    /// How many predecessors each task waits for.
    pub fn pred_counts(&self) -> &[u32] {
        &self.preds
    }

    pub fn successors(&self, task: u32) -> &[u32] {
        let t = task as usize;
        &self.succ[self.succ_start[t]..self.succ_start[t + 1]]
    }

    pub fn roots(&self) -> &[u32] {
        &self.roots
    }

    /// Tasks without successors: a frame is complete when all of them are.
    pub fn sinks(&self) -> u32 {
        self.sinks
    }
}

fn header(line: &str) -> Result<usize, String> {
    match line.split_whitespace().collect::<Vec<_>>()[..] {
        ["tomii-suite-dag", "1", n] => match n.parse() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("line 1: bad task count {n:?}")),
        },
        _ => Err(format!("line 1: expected `tomii-suite-dag 1 N`, found {line:?}")),
    }
}

fn task_line(task: usize, line: &str) -> Result<(u64, Vec<u32>), String> {
    let at = || format!("line {} (task {task})", task + 2);
    let numbers: Vec<u64> =
        line.split_whitespace().map(str::parse).collect::<Result<_, _>>().map_err(|e| format!("{}: {e}", at()))?;
    let (&cost, rest) = numbers.split_first().ok_or_else(|| format!("{}: empty", at()))?;
    let (&count, preds) = rest.split_first().ok_or_else(|| format!("{}: no predecessor count", at()))?;
    if preds.len() as u64 != count || preds.iter().any(|&p| p >= task as u64) {
        return Err(format!("{}: expected {count} predecessors, each an earlier task", at()));
    }
    Ok((cost, preds.iter().map(|&p| p as u32).collect()))
}

#[cfg(test)]
mod tests {
    use super::Dag;

    #[test]
    fn reads_a_diamond() {
        let dag = Dag::parse("tomii-suite-dag 1 4\n0 0\n5 1 0\n5 1 0\n0 2 1 2\n").unwrap();
        assert_eq!(dag.len(), 4);
        assert_eq!(dag.successors(0), &[1, 2]);
        assert_eq!(dag.successors(3), &[] as &[u32]);
        assert_eq!(dag.pred_counts(), &[0, 1, 1, 2]);
        assert_eq!((dag.roots(), dag.sinks(), dag.cost(1)), (&[0][..], 1, 5));
    }

    #[test]
    fn rejects_a_forward_edge() {
        assert!(Dag::parse("tomii-suite-dag 1 2\n0 1 1\n0 0\n").unwrap_err().contains("line 2"));
    }
}
