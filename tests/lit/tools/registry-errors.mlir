// Unknown pass / option / pipeline names fail with a list of the known ones.
// RUN: not xgen-opt %s -p xgen-no-such-pass 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: not xgen-opt %s -p "xgen-set-entry-point{colour=red}" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not xgen-opt %s -p "no-such-upstream-pass" 2>&1 | FileCheck %s --check-prefix=UP
// RUN: not xgen-opt %s --pipeline=no-such-target 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: not xgen-opt %s --pipeline=%S/../pipelines/Inputs/malformed.toml 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: xgen-opt --list-passes | FileCheck %s --check-prefix=LIST

// PASS: unknown pass 'xgen-no-such-pass'; known passes: {{.*}}xgen-fold-transpose-pairs, {{.*}}xgen-set-entry-point
// OPT: pass 'xgen-set-entry-point' has no option 'colour'; options: name
// UP: cannot parse pipeline step 'no-such-upstream-pass'
// PIPE: unknown pipeline 'no-such-target'; known pipelines: {{.*}}cpu
// BAD: malformed.toml: malformed pipeline, missing or wrong key 'why'
// LIST-DAG: xgen-fold-transpose-pairs graph patterns
// LIST-DAG: xgen-verify-iree-input graph python
// LIST-DAG: xgen-plan-fusion dispatch python
// LIST-DAG: xgen-merge-duplicate-outputs dispatch python
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
