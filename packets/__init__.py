"""packets"""
