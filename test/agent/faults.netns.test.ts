// Fault injection at the native boundary: the first half of the error classes
// (test/agent/faults-case.ts; the second half in faults-2.netns.test.ts, run beside it).
import { FAULT_CLASSES } from '../../src/native/index.js';
import { faultCases } from './faults-case.js';

faultCases(FAULT_CLASSES.slice(0, 4));
