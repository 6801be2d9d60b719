"""Wheel building: overlay (stock wheel + Python patches) and, later, source builds."""
