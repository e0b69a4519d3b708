// Fault injection at the native boundary: the second half of the error classes
// (test/agent/faults-case.ts; the first half in faults.netns.test.ts, run beside it).
import { FAULT_CLASSES } from '../../src/native/index.js';
import { faultCases } from './faults-case.js';

faultCases(FAULT_CLASSES.slice(4));
