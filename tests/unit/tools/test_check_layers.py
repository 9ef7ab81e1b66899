#!/usr/bin/env python3
"""tools/check_layers.py against small planted trees: each rule passes a clean include and fails
a planted violation, so the layers test cannot pass by checking nothing.

    tests/unit/tools/test_check_layers.py [REPO_ROOT]
"""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

REPO = sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else \
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(REPO, "tools", "check_layers.py")
spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
check_layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_layers)

# A small house that follows every rule: each test adds one file to it.
CLEAN = {
    "core/ids.hpp": "#include <string>\n",
    "text/tokenizer.hpp": '#include "core/ids.hpp"\n',
    "proto/protocol.hpp": '#include "text/tokenizer.hpp"\n#include "core/ids.hpp"\n',
    "worker/engine/kernels/gemm.hpp": "#include <vector>\n",
    "worker/engine/kernels/x86/avx2.cpp": '#include "worker/engine/kernels/gemm.hpp"\n',
    "worker/engine/checkpoint/safetensors.hpp": '#include "worker/engine/kernels/gemm.hpp"\n',
    "worker/engine/lora/lora_adapter.hpp": '#include "worker/engine/checkpoint/safetensors.hpp"\n',
    "worker/engine/sampling/sampler.hpp": '#include "core/ids.hpp"\n',
    "worker/engine/model/cpu_model.hpp": '#include "worker/engine/lora/lora_adapter.hpp"\n'
                                         '#include "worker/engine/kernels/gemm.hpp"\n',
    "worker/engine/reference/gpt2_model.hpp": "#include <ATen/ATen.h>\n"
                                              '#include "worker/engine/model/cpu_model.hpp"\n'
                                              '#include "text/tokenizer.hpp"\n',
    "worker/serving_loop.cpp": '#include "worker/engine/reference/gpt2_model.hpp"\n'
                               '#include "worker/engine/sampling/sampler.hpp"\n',
    "gateway/zmq/gateway.cpp": '#include "text/tokenizer.hpp"\n#include "proto/protocol.hpp"\n',
    "tools/train/trainer.cpp": "#include <torch/torch.h>\n",
    "tools/common/args.hpp": '#include "core/ids.hpp"\n',
    "tools/bench/bench_engine.cpp": '#include "tools/common/args.hpp"\n#include "proto/protocol.hpp"\n',
    "tools/cli/main.cpp": '#include "tools/bench/bench_engine.cpp"\n#include "tools/train/trainer.cpp"\n',
    "tests/unit/anything.cpp": '#include <ATen/ATen.h>\n#include "tools/train/trainer.hpp"\n',
}


def found(extra):
    """The violations of CLEAN plus `extra` (path -> text)."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in {**CLEAN, **extra}.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        return list(check_layers.violations(root))


class CheckLayers(unittest.TestCase):
    def assert_one(self, extra, words):
        v = found(extra)
        self.assertEqual(len(v), 1, v)
        for w in words:
            self.assertIn(w, v[0])

    def test_the_clean_house_passes(self):
        self.assertEqual(found({}), [])

    def test_the_repository_passes(self):
        self.assertEqual(list(check_layers.violations(REPO)), [])

    def test_an_include_from_a_floor_above_fails(self):
        self.assert_one({"core/bad.hpp": '#include "worker/scheduler.hpp"\n'},
                        ["core/bad.hpp:1", "a floor above"])

    def test_a_peer_on_the_same_floor_fails(self):
        self.assert_one({"proto/bad.cpp": '#include "cache/block_manager.hpp"\n'},
                        ["proto/bad.cpp:1", "a peer"])

    def test_text_sits_below_proto(self):
        self.assertEqual(found({"proto/ok.cpp": '#include "text/text_stream.hpp"\n'}), [])
        self.assert_one({"text/bad.cpp": '#include "proto/protocol.hpp"\n'}, ["a floor above"])

    def test_a_room_including_a_room_above_fails(self):
        self.assert_one({"worker/engine/kernels/bad.cpp":
                         '#include "worker/engine/model/cpu_model.hpp"\n'},
                        ["worker/engine/kernels/", "a floor above"])

    def test_peer_rooms_do_not_include_each_other(self):
        self.assert_one({"worker/engine/lora/bad.cpp":
                         '#include "worker/engine/sampling/sampler.hpp"\n'},
                        ["worker/engine/lora/", "a peer"])

    def test_a_room_including_the_folder_around_it_fails(self):
        self.assert_one({"worker/engine/model/bad.cpp": '#include "worker/scheduler.hpp"\n'},
                        ["worker/engine/model/bad.cpp:1", "the folder around its rooms"])

    def test_a_room_includes_lower_floors_of_the_house(self):
        self.assertEqual(found({"worker/engine/model/ok.cpp":
                                '#include "core/ids.hpp"\n#include "text/tokenizer.hpp"\n'}), [])

    def test_a_room_including_a_floor_above_its_folder_fails(self):
        self.assert_one({"worker/engine/model/bad.cpp": '#include "actors/messages.hpp"\n'},
                        ["worker/", "a floor above"])

    def test_the_tools_rooms(self):
        # The benchmarks and the load tester are peers no more: what they share is in common/.
        self.assert_one({"tools/loadtest/stats.cpp": '#include "tools/bench/bench_engine.cpp"\n'},
                        ["tools/loadtest/", "a floor above"])
        self.assert_one({"tools/bench/x.cpp": '#include "tools/gpu/y.hpp"\n', "tools/gpu/y.hpp": "\n"},
                        ["tools/bench/", "a peer"])
        self.assert_one({"tools/common/x.hpp": '#include "tools/cli/commands.hpp"\n'},
                        ["tools/common/", "a floor above"])
        self.assert_one({"tools/stray.cpp": "\n"}, ["tools/stray.cpp", "rooms only"])

    def test_a_file_outside_the_rooms_fails(self):
        self.assert_one({"worker/engine/loose.hpp": "\n"}, ["worker/engine/loose.hpp", "rooms only"])
        self.assert_one({"worker/engine/misc/x.hpp": "\n"}, ["worker/engine/misc/", "not a room"])

    def test_torch_outside_its_rooms_fails(self):
        self.assert_one({"worker/engine/model/bad.cpp": "#include <ATen/Parallel.h>\n"},
                        ["<ATen/Parallel.h>", "worker/engine/reference/"])
        self.assert_one({"gateway/zmq/bad.cpp": "#include <torch/torch.h>\n"}, ["<torch/torch.h>"])
        self.assert_one({"worker/bad.cpp": "#include <c10/util/Half.h>\n"}, ["<c10/util/Half.h>"])
        self.assertEqual(found({"worker/engine/reference/ok.cpp": "#include <ATen/Parallel.h>\n",
                                "tools/train/ok.cpp": "#include <ATen/ATen.h>\n"}), [])

    def test_core_takes_the_standard_library_only(self):
        self.assert_one({"core/bad.cpp": "#include <nlohmann/json.hpp>\n"}, ["standard library"])
        self.assert_one({"core/bad.cpp": "#include <sys/socket.h>\n"}, ["standard library"])
        self.assertEqual(found({"core/ok.cpp": "#include <sys/stat.h>\n#include <unistd.h>\n"}), [])

    def test_the_command_exits_1_on_a_violation(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "worker", "engine", "kernels"))
            with open(os.path.join(root, "worker", "engine", "kernels", "bad.cpp"), "w") as f:
                f.write('#include "worker/engine/reference/gpt2_model.hpp"\n')
            r = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("worker/engine/kernels/bad.cpp:1", r.stdout)
            r = subprocess.run([sys.executable, SCRIPT, REPO], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
