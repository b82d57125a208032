DROP TABLE IF EXISTS node_evidence;
