{
  "targets": [
    {
      "target_name": "fibkeeper",
      "sources": [
        "addon.cc",
        "bpf_common.cc",
        "bpf_link.cc",
        "bpf_map.cc",
        "bpf_object.cc",
        "bpf_program.cc",
        "bpf_system.cc",
        "cluster_io.cc",
        "errors.cc",
        "faults.cc",
        "lock.cc",
        "mount.cc",
        "netlink_socket.cc",
        "netns.cc",
        "node_policy.cc",
        "notify.cc",
        "packet_socket.cc",
        "poller.cc",
        "process.cc",
        "receiving_socket.cc",
        "send_queue.cc"
      ],
      "dependencies": [
        "<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"
      ],
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags_cc": ["-std=gnu++17", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": ["-lbpf"]
    }
  ]
}
