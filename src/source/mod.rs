//! Capture sources: files (pcap, pcapng, standard input).
