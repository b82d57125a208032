DROP TABLE IF EXISTS held_handles;
