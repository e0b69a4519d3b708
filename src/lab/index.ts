// The namespace labs: `fibkeeper lab up|down` (lab.ts, the topology of topology.ts), the
// cluster segment (cluster.ts), the reaper of what they start, and the fault soak (faults.ts).
export {
  checkPrefix,
  describeLab,
  PREFIX_RE,
  type Lab,
  type LabHost,
  type LabLink,
} from './topology.js';
export {
  clusterAgentConfig,
  clusterLabDown,
  clusterLabNamespaces,
  clusterLabUp,
  describeClusterLab,
  type ClusterAgentOptions,
  type ClusterLab,
  type ClusterLabNode,
} from './cluster.js';
export { Reaper, processStartTime } from './reaper.js';

export { labExists, labUp, labDown } from './lab.js';
export { faultSoak, type SoakOptions, type SoakResult } from './faults.js';
export { AnswerProbe, type Answer, type AnswerProbeOptions, type DualInterval } from './answers.js';
